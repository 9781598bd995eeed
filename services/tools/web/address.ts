/** web_fetch's address rules: they live in shared/runtime/public-address.ts (the browser actor applies them too). */
export { isPublicAddress } from "../../../shared/runtime/public-address.js";
