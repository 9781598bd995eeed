/**
 * The JSON Schema of a served tool's zod arguments schema, as the tool catalog carries it
 * (`definition.parameters`): the input side (defaults optional), anything zod cannot express
 * as `{}`, without the `$schema` key. Used by every actor that serves tools (serveTools).
 */
import { z } from "zod";

export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}
