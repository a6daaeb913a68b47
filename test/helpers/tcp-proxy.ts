import { once } from 'node:events';
import net from 'node:net';

/**
 * A TCP proxy in front of a service (PostgreSQL, Redis): stopping it (listener closed, every socket destroyed) is
 * the database going away for the app; starting it again on the same port brings it back.
 */
export function createProxy(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;

  function track(socket: net.Socket) {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  return {
    get port() {
      return port;
    },
    async start() {
      server = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        track(client);
        track(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
      port = (server.address() as net.AddressInfo).port;
    },
    async stop() {
      const closing = server;
      server = null;
      if (!closing) return;
      const closed = once(closing, 'close');
      closing.close();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
