/** web_fetch's address rules: they live in shared/runtime/public-address.ts (the browser actor applies them too). */
export { isPublicAddress, parseIPv6 } from "../../../shared/runtime/public-address.js";
