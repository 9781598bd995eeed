/**
 * String order by UTF-16 code units: the same on every host, whatever its locale, and free of
 * ICU. Used where actors sort names (tool catalogs, skills, memory files): a tool list that is
 * byte-identical from run to run and host to host keeps providers' prompt caches warm, and
 * `localeCompare` pages ~3 MB of ICU collation data into each process that calls it.
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
