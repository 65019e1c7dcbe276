// The benchmarks' lightest HTTP client: node:http over keep-alive sockets, each body drained
// unread unless the status is not 200 (fetch's undici took ~0.19 cores of the two at short texts,
// which the server then could not use).
import http from 'node:http';

/** POSTs JSON to `url` through `agent`; resolves with the status, and the body text where it is not 200. */
export function postJson(agent: http.Agent, url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const status = res.statusCode ?? 0;
      let text = '';
      res.on('data', (d: Buffer) => {
        if (status !== 200) text += d;
      });
      res.on('end', () => resolve({ status, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
