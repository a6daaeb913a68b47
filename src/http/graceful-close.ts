import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Lets `app.close()` finish promptly: from its start, every answer carries `Connection: close` (so
 * keep-alive clients let go once served), connections that never sent a request are destroyed, and
 * any that arrives meanwhile is refused at once.
 */
export function registerGracefulClose(app: FastifyInstance): void {
  // While shutting down, answer in-flight requests with `Connection: close` so keep-alive
  // clients let go and the process can exit as soon as they are done.
  let closing = false;
  // Connections that never sent a request (pre-connects, aborted fetches, TCP probes) would hold
  // server.close() open forever; idle keep-alive ones Fastify closes itself.
  const silent = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    // One that arrives while closing (accepted before the listener stops) would never be served.
    if (closing) {
      socket.destroy();
      return;
    }
    silent.add(socket);
    socket.once('close', () => silent.delete(socket));
  });
  app.server.on('request', (req: IncomingMessage) => silent.delete(req.socket));
  app.addHook('preClose', async () => {
    closing = true;
    for (const socket of silent) socket.destroy();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
