// The baseline: a bare Fastify route answering a small JSON object, in its own process.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/bare', async () => ({ status: 'ok', id: '01a201c0-2001-7e8a-b912-dfd1e8aa1b98' }));
app.post('/bare', async (request) => ({ received: true, size: JSON.stringify(request.body).length }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.send?.('ready');
