/**
 * A per-request cost in nats.js (nats-core 3.x): every request that got its reply calls
 * `RequestOne.cancel()`, which builds `new RequestError("cancelled")` (a stack capture) only to
 * reject a promise that is already resolved. Installed once per process, this passes one
 * prebuilt error instead; a request cancelled for real still rejects with a RequestError whose
 * message is "cancelled" (without a stack, as with `noAsyncTraces`).
 */
import { errors } from "@nats-io/nats-core";
import { RequestOne } from "@nats-io/nats-core/internal";

const CANCELLED = new errors.RequestError("cancelled");
let installed = false;

export function installRequestCancelFix(): void {
  if (installed) return;
  installed = true;
  const cancel = RequestOne.prototype.cancel;
  RequestOne.prototype.cancel = function cancelWithoutStack(this: RequestOne, err?: Error): void {
    cancel.call(this, err ?? CANCELLED);
  };
}
