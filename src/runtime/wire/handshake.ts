/**
 * The first two frames of every JobTracker connection (auth.ts): the JobTracker's challenge and
 * the peer's proof of the cluster secret or of a user's credential (`via`). Nothing else is
 * accepted before the proof.
 */
import { args, table } from './operations.js';
import { Type } from './schema.js';

const Nonce = Type.String({ pattern: '^[0-9a-f]{32,128}$', description: '32-128 hex digits' });

export const HANDSHAKE = table({
  hello: { summary: "the JobTracker's challenge", args: args({ nonce: Nonce }), result: null, allowed: ['any'] },
  auth: {
    summary: "proof of the cluster secret, or of user's credential, for user; answered with the JobTracker's own proof",
    args: args({
      user: Type.String({ maxLength: 256 }),
      nonce: Type.String({ maxLength: 256 }),
      proof: Type.String({ maxLength: 256 }),
      via: Type.Optional(Type.Union([Type.Literal('secret'), Type.Literal('credential')])),
    }),
    result: Type.Object({ proof: Type.String(), user: Type.String() }),
    allowed: ['any'],
  },
});
export type AuthResult = { proof: string; user: string };
