/**
 * JSON request bodies, decoded strictly: the bytes must be UTF-8 (RFC 8259
 * §8.1), or the request is a 400 `invalid_body`, never text with U+FFFD in
 * place of what the client sent. Fastify's own JSON parser (with its
 * prototype-poisoning guards) then reads the text.
 */
import type { FastifyInstance } from "fastify";
import { invalid } from "./apiError";

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** A declared charset other than UTF-8 cannot be read as JSON here. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? "");
  return match?.[1]?.toLowerCase();
}

export function strictJsonBodies(app: FastifyInstance): void {
  const parseText = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const charset = charsetOf(request.headers["content-type"]);
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
      done(invalid(`the request body is declared ${charset}; send JSON as UTF-8`, null, "invalid_body"), undefined);
      return;
    }
    let text: string;
    try {
      text = UTF8.decode(body as Buffer);
    } catch {
      done(invalid("the request body is not valid UTF-8", null, "invalid_body"), undefined);
      return;
    }
    parseText(request, text, done);
  });
}
