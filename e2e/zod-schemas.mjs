// Writes ../runtime/grammar/testdata/zod-schemas.json: the JSON Schemas
// zod 4 emits by default (z.toJSONSchema) for the constructs clients use in
// structured output. Run: npm ci --prefix e2e && node e2e/zod-schemas.mjs
import { writeFileSync } from "node:fs";
import { z } from "zod";

const cases = {
  "zod-int": z.number().int(),
  "zod-int-range": z.number().int().min(-5).max(1000),
  "zod-int-positive": z.number().int().positive(),
  "zod-number-range": z.number().min(0).max(1.5),
  "zod-number-gt-lt": z.number().gt(-2.5).lt(10),
  "zod-string-min-max": z.string().min(2).max(6),
  "zod-regex": z.string().regex(/^[A-Z]{2}-\d{3,4}$/),
  "zod-email": z.email(),
  "zod-string-email": z.string().email(),
  "zod-date": z.iso.date(),
  "zod-datetime": z.iso.datetime(),
  "zod-time": z.iso.time(),
  "zod-uuid": z.uuid(),
  "zod-guid": z.guid(),
  "zod-url": z.url(),
  "zod-ipv4": z.ipv4(),
  "zod-hostname": z.hostname(),
  "zod-cuid": z.cuid(),
  "zod-nanoid": z.nanoid(),
  "zod-ulid": z.ulid(),
  "zod-e164": z.e164(),
  "zod-base64": z.base64(),
  "zod-starts-with": z.string().startsWith("id-").max(8),
  "zod-ends-with": z.string().endsWith("!").max(4),
  "zod-includes": z.string().includes("@").max(5),
  "zod-record": z.record(z.string(), z.number().int().min(0).max(9)),
  "zod-record-enum-keys": z.record(z.enum(["a", "b"]), z.boolean()),
  "zod-union": z.union([z.string().max(5), z.number().int().min(1).max(3), z.null()]),
  "zod-optional": z.object({ id: z.number().int(), note: z.string().max(8).optional() }),
  "zod-nested-arrays": z.array(z.array(z.number().int().min(0).max(99)).max(3)).max(3),
  "zod-object": z.object({
    name: z.string().min(1).max(10),
    age: z.number().int().min(0).max(150),
    email: z.email().optional(),
    born: z.iso.date(),
    id: z.uuid(),
    tags: z.array(z.string().regex(/^[a-z]+$/).max(5)).min(1).max(3),
    kind: z.enum(["a", "b"]).nullable(),
    extra: z.record(z.string(), z.string().max(4)).optional(),
  }),
};

const out = Object.entries(cases).map(([name, schema]) => ({ name, schema: z.toJSONSchema(schema) }));
const file = new URL("../runtime/grammar/testdata/zod-schemas.json", import.meta.url);
writeFileSync(file, JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${out.length} schemas to ${file.pathname}`);
