/*
 * Memory an idle actor can give back, for Node through N-API (one build serves every Node
 * version; Linux with glibc, elsewhere both calls do nothing):
 *
 * trim(): glibc's malloc_trim(0). Besides shrinking the top of the main heap (which free() does
 * on its own), it gives back with madvise(MADV_DONTNEED) the free pages inside every arena, which
 * glibc otherwise keeps after a busy spell. Returns whether any memory went back.
 *
 * releaseSharedFilePages(suffix): madvise(MADV_DONTNEED) on every shared file mapping of this
 * process whose path ends with `suffix` (e.g. "/data.mdb": LMDB maps its file shared). For a
 * shared file mapping this only drops the process's page-table entries: the pages stay in the
 * system's page cache (dirty ones are still written back) and the next access maps them again,
 * so no data changes. Private and anonymous mappings are never touched. Returns the bytes of
 * mappings released.
 */
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value Trim(napi_env env, napi_callback_info info) {
  int released = 0;
#if defined(__GLIBC__)
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released != 0, &result);
  return result;
}

#define MAX_PATH_BYTES 4096

static napi_value ReleaseSharedFilePages(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char suffix[MAX_PATH_BYTES];
  size_t suffixLen = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], suffix, sizeof suffix, &suffixLen) != napi_ok || suffixLen == 0 || suffixLen >= sizeof suffix - 1) {
    napi_throw_type_error(env, NULL, "releaseSharedFilePages(suffix): suffix must be a non-empty path string");
    return NULL;
  }
  double released = 0;
#if defined(__linux__)
  FILE *maps = fopen("/proc/self/maps", "r");
  if (maps != NULL) {
    char line[MAX_PATH_BYTES + 256];
    while (fgets(line, sizeof line, maps) != NULL) {
      unsigned long start = 0, end = 0;
      char perms[5] = {0};
      int pathAt = 0;
      /* start-end perms offset dev inode path */
      if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &start, &end, perms, &pathAt) < 3 || pathAt == 0) continue;
      char *path = line + pathAt;
      path[strcspn(path, "\n")] = '\0';
      size_t pathLen = strlen(path);
      if (perms[3] != 's' || path[0] != '/' || pathLen < suffixLen || strcmp(path + pathLen - suffixLen, suffix) != 0) continue;
      if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) == 0) released += (double)(end - start);
    }
    fclose(maps);
  }
#endif
  napi_value result;
  napi_create_double(env, released, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value trim, release;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &trim);
  napi_set_named_property(env, exports, "trim", trim);
  napi_create_function(env, "releaseSharedFilePages", NAPI_AUTO_LENGTH, ReleaseSharedFilePages, NULL, &release);
  napi_set_named_property(env, exports, "releaseSharedFilePages", release);
  return exports;
}
