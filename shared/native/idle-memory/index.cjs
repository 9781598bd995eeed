// trim() and releaseSharedFilePages(suffix): see idle-memory.c.
module.exports = require("./build/Release/idle_memory.node");
