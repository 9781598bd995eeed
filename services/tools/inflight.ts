/** The tools actor's in-flight calls, cancelled over the bus: shared/runtime/tool-inflight.ts. */
export { InflightCalls } from "../../shared/runtime/tool-inflight.js";
