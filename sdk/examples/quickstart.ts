import { createClient, type CoordError } from '@coord/sdk';

const coord = createClient({ baseUrl: process.env.COORD_URL ?? 'http://127.0.0.1:3000', token: process.env.COORD_TOKEN });
const added = await coord.todos.add({ title: 'Wire the claim CAS', tags: ['backend'] });
const { claimed, item } = await coord.todos.next(); // { claimed: false } when nothing is eligible
if (claimed && item) console.log('done:', (await coord.todos.done(item.id)).status);
for await (const e of coord.events.follow(added.scope, { after: 0 })) {
  console.log(e.seq, e.event, e.data.id);
  if (e.event === 'done') break;
}
await coord.todos.claim(added.id).catch((err: CoordError) => console.log(err.name, err.code));
