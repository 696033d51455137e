// Creates many public sessions quickly (run inside the server namespace by
// lobby-scale.test.mjs, since the test process cannot reach the server):
//   node create-sessions.mjs URL COUNT BUILD
// `Scale session 0000` is the oldest and the last one the newest (each made
// alone, with a pause on either side); every tenth session is full. Bounded:
// COUNT requests at most, 64 at a time, within 120 s. Prints `created N`.

const [url, countText, build] = process.argv.slice(2);
const count = Number(countText);
const SDP = 'v=0\r\no=- 4611 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n';
const deadline = Date.now() + 120_000;
let next = 0;
let created = 0;

/** @param {number} i */
async function create(i) {
    const res = await fetch(`${url}/session`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `Scale session ${String(i).padStart(4, '0')}`, hostName: `Host ${i}`,
        players: i % 10 === 0 ? 4 : 1, maxPlayers: 4, build, hostKind: 'player', offer: SDP,
      }),
    });
    if (res.status !== 201) throw new Error(`create ${i}: ${res.status} ${await res.text()}`);
    created += 1;
}

async function worker() {
  while (next < count - 1 && Date.now() < deadline) await create(next++);
}

const pause = () => new Promise((r) => setTimeout(r, 5));
await create(next++);
await pause();
await Promise.all(Array.from({ length: 64 }, worker));
await pause();
if (count > 1) await create(count - 1);
console.log(`created ${created}`);
