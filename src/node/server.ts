// The Node adapter: serves the Hono app over node:http.
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Hono } from 'hono';

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections and resolves once open ones have closed. */
  close(): Promise<void>;
  /** Drops every open connection (after a drain timeout). */
  closeAllConnections(): void;
}

export function startServer(app: Hono, options: { port: number; host: string }): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    let server: ServerType;
    const onError = (error: Error) => reject(error);
    server = serve({ fetch: app.fetch, port: options.port, hostname: options.host }, (info: AddressInfo) => {
      server.off('error', onError);
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
          }),
        closeAllConnections: () => (server as { closeAllConnections?: () => void }).closeAllConnections?.(),
      });
    });
    server.once('error', onError);
  });
}
