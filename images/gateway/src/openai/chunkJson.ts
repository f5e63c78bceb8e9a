/**
 * A streamed chunk's JSON from its parts: `head`, the response's constant
 * fields serialized once (`{"id":…,"object":…,"created":…,"model":…,"choices":`),
 * then the one choice and the usage when the chunk carries it. The bytes are
 * those JSON.stringify gives the whole object, fields in the same order; only
 * the choice is serialized at every token.
 */
export function chunkJson(head: string, choice: object, usage?: object): string {
  const tail = usage ? `],"usage":${JSON.stringify(usage)}}` : "]}";
  return `${head}[${JSON.stringify(choice)}${tail}`;
}

/** `head` of chunkJson for a response's constant fields. */
export function chunkHead(fields: { id: string; object: string; created: number; model: string }): string {
  const { id, object, created, model } = fields;
  return `${JSON.stringify({ id, object, created, model }).slice(0, -1)},"choices":`;
}
