// A real upstream OpenID provider for the federation tests (docs/architecture.md D58): panva's
// oidc-provider (an OpenID Certified implementation) with its development login page, which takes any
// login name: the name picks an account of the table below. It listens on 127.0.0.1 at a port the
// kernel picks and prints one JSON line, {"msg":"listening","addr":…,"issuer":…}, when it is ready.
//
//   node op.mjs '<json>'   with {"clients":[{client_id, client_secret, redirect_uris}], "accounts":{login: claims}}
//
// Refresh tokens (offline_access with prompt=consent) are issued and rotated at every use, as many
// providers do. For the re-check tests (D78), POST /__test/remove/<login> removes an account: its
// refresh tokens are refused from then on (invalid_grant), as a provider whose person was removed does.
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import Provider from 'oidc-provider';

const conf = JSON.parse(process.argv[2] ?? '{}');
const accounts = conf.accounts ?? {};
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'upstream-test', use: 'sig', alg: 'RS256' };

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: (conf.clients ?? []).map((c) => ({ grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...c })),
    jwks: { keys: [jwk] },
    cookies: { keys: ['upstream-test-cookie-key'] },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    features: { devInteractions: { enabled: true } },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    conformIdTokenClaims: false, // the claims in the ID token, where connectors read them
    async findAccount(ctx, id) {
      const claims = accounts[id];
      if (!claims) return undefined;
      return { accountId: id, async claims() { return { sub: id, ...claims }; } };
    },
    // Our clients are first-party: no consent page (the sign-in page alone).
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile groups offline_access');
      await grant.save();
      return grant;
    },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  const callback = provider.callback();
  server.on('request', (req, res) => {
    const removal = req.method === 'POST' && req.url.match(/^\/__test\/remove\/([^/?]+)$/);
    if (removal) {
      const login = decodeURIComponent(removal[1]);
      const found = login in accounts;
      delete accounts[login];
      res.writeHead(found ? 204 : 404).end();
      return;
    }
    callback(req, res);
  });
  console.log(JSON.stringify({ msg: "listening", addr: `127.0.0.1:${server.address().port}`, issuer }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
