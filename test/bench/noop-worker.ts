/** The baseline piscina task: does nothing but return its input. */
export default function noop(input: unknown): unknown {
  return input;
}
