// The Node adapter: serves the Hono app over node:http, with a graceful drain.
import { serve, type ServerType } from '@hono/node-server';
import { Server as NetServer, type AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
/** Anything with a fetch handler, e.g. the Hono app. */
export interface FetchApp {
  fetch(request: Request): Response | Promise<Response>;
}

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /**
   * Stops accepting connections, lets requests already sent on open connections finish,
   * then closes the connections; resolves when all are closed.
   */
  close(): Promise<void>;
  /** Drops every open connection (after a drain timeout). */
  closeAllConnections(): void;
}

/** How long open connections must stay quiet before the drain closes them. */
const DRAIN_QUIET_MS = 250;

export function startServer(app: FetchApp, options: { port: number; host: string }): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    let active = 0;
    let server: ServerType;
    const onError = (error: Error) => reject(error);
    server = serve({ fetch: (request: Request) => app.fetch(request), port: options.port, hostname: options.host }, (info: AddressInfo) => {
      server.off('error', onError);
      const http = server as HttpServer;
      http.on('request', (_req, res) => {
        active++;
        res.once('close', () => active--);
      });
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            // net.Server's close stops accepting but, unlike http.Server's since Node 19, does not
            // drop idle connections at once: a request already on its way over one still lands.
            let quietSince: number | undefined;
            const timer = setInterval(() => {
              if (active > 0) quietSince = undefined;
              else if ((quietSince ??= Date.now()) + DRAIN_QUIET_MS <= Date.now()) http.closeIdleConnections();
            }, 25);
            NetServer.prototype.close.call(http, () => (clearInterval(timer), done()));
          }),
        closeAllConnections: () => http.closeAllConnections(),
      });
    });
    server.once('error', onError);
  });
}
