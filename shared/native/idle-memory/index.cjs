// trim() and releaseSharedFilePages(suffix) (idle-memory.c, N-API), and lowMemoryNotification()
// (v8-low-memory.cc, V8's C++ API: loaded apart, absent when this Node's V8 lacks it).
const native = require("./build/Release/idle_memory.node");
let lowMemoryNotification;
try {
  ({ lowMemoryNotification } = require("./build/Release/v8_low_memory.node"));
} catch {
  lowMemoryNotification = undefined;
}
module.exports = { trim: native.trim, releaseSharedFilePages: native.releaseSharedFilePages, lowMemoryNotification };
