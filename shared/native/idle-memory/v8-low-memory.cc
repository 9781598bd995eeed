/*
 * lowMemoryNotification(): V8's Isolate::LowMemoryNotification() for the calling thread's
 * isolate: full collections that compact every fragmented page ("Mark-Compact (reduce)") and
 * drop V8's compilation cache, what a browser does for a tab in the background. A plain full
 * collection (gc()) leaves pages that are half full as they are: in the agent-runner after a
 * load that was 3-4 MB of old space committed but unused.
 *
 * This target uses V8's C++ API, whose ABI is not promised across Node majors, unlike N-API's;
 * it is its own module so that a Node whose V8 lacks these two symbols only loses this one call
 * (index.cjs loads it apart). Node 20, 22 and 24 have them.
 */
#include <node_api.h>
#include <v8.h>

static napi_value LowMemoryNotification(napi_env env, napi_callback_info info) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  if (isolate != nullptr) isolate->LowMemoryNotification();
  napi_value result;
  napi_get_undefined(env, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "lowMemoryNotification", NAPI_AUTO_LENGTH, LowMemoryNotification, nullptr, &fn);
  napi_set_named_property(env, exports, "lowMemoryNotification", fn);
  return exports;
}
