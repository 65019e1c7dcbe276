// A small stand-in for a cloud model-hosting platform in front of a proxy-mode container:
// it forwards invocations and, like such platforms do, wraps a container error as
// {ErrorCode, OriginalStatusCode, OriginalMessage, Message} under status 424.
import { createServer, type Server } from 'node:http';

export async function startPlatformEmulator(containerURL: string, options: { garbleErrors?: boolean } = {}): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const upstream = await fetch(`${containerURL}/invocations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
    const text = await upstream.text();
    if (upstream.ok) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(text);
      return;
    }
    const original = options.garbleErrors ? 'upstream worker crashed' : text;
    res.writeHead(424, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        ErrorCode: 'CLIENT_ERROR_FROM_MODEL',
        LogStreamArn: 'arn:emulator:logs:stream',
        Message: `Received client error (${upstream.status}) from primary with message "${original}".`,
        OriginalMessage: original,
        OriginalStatusCode: upstream.status,
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/endpoints/lexembed/invocations`, close: () => new Promise((r) => server.close(() => r())) };
}
