// panva's openid-client (the version in package-lock.json) as a Node web app uses it: a confidential
// client (client_secret_post) with PKCE S256 and the library's non-repudiation checks on (it then
// verifies the ID token's signature against the JWKS). Run by openidclient_test.go, which plays the
// person's browser: this script writes {"visit": url, "stopAt": prefix} on stdout and reads back
// {"url": where the browser stopped, "status": the last answer's status} on stdin. Assertions fail the
// script (exit code 1); the last line is {"done": true}.
import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import * as client from 'openid-client';

const { issuer, clientId, clientSecret, redirectUri, postLogoutUri, email } = JSON.parse(process.argv[2]);
const replies = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const step = (name) => say({ step: name });

async function browse(url, stopAt) {
  say({ visit: url.toString(), stopAt });
  const { value, done } = await replies.next();
  if (done) throw new Error('the browser (the Go test) went away');
  return JSON.parse(value);
}

// rejects expects the library to reject with an OAuth error code.
async function rejects(promise, code, what) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.error, code, `${what}: ${err}`);
    return true;
  }, what);
}

step('discovery');
const config = await client.discovery(new URL(issuer), clientId, undefined, client.ClientSecretPost(clientSecret), {
  execute: [client.allowInsecureRequests], // the test's issuer is http on loopback
});
client.enableNonRepudiationChecks(config);
assert.equal(config.serverMetadata().issuer, issuer);

// signIn: authorization request with PKCE, the hosted page, the callback as the library checks it.
async function signIn(extra = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid profile email offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state, nonce, ...extra,
  });
  const back = await browse(url, redirectUri);
  return { callback: new URL(back.url), verifier, state, nonce };
}

step('authorization code + PKCE through the hosted page');
const first = await signIn();
const tokens = await client.authorizationCodeGrant(config, first.callback, {
  pkceCodeVerifier: first.verifier, expectedState: first.state, expectedNonce: first.nonce, idTokenExpected: true,
});
const claims = tokens.claims();
assert.equal(claims.email, email);
assert.ok(tokens.refresh_token, 'a refresh token for offline_access');

step('userinfo');
const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
assert.equal(info.email, email);

step('refresh with rotation');
const rotated = await client.refreshTokenGrant(config, tokens.refresh_token);
assert.ok(rotated.refresh_token && rotated.refresh_token !== tokens.refresh_token, 'a new refresh token');
assert.notEqual(rotated.access_token, tokens.access_token);
assert.equal(rotated.claims().sub, claims.sub);

step('error path: wrong PKCE verifier');
const second = await signIn(); // the browser is signed in: straight back with a code
await rejects(client.authorizationCodeGrant(config, second.callback, {
  pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: second.state, expectedNonce: second.nonce,
}), 'invalid_grant', 'a code redeemed with another verifier');

step('error path: foreign redirect URI');
for (const foreign of ['http://127.0.0.1:1/callback', redirectUri + '/', redirectUri + '?x=1']) {
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: foreign, scope: 'openid', state: client.randomState(),
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
  });
  const page = await browse(url, foreign);
  assert.equal(page.status, 400, `redirect_uri ${foreign} must get the error page, not a redirect (${page.url})`);
}

step('revocation');
await client.tokenRevocation(config, rotated.refresh_token, { token_type_hint: 'refresh_token' });
await rejects(client.refreshTokenGrant(config, rotated.refresh_token), 'invalid_grant', 'the revoked refresh token');
await rejects(client.refreshTokenGrant(config, tokens.refresh_token), 'invalid_grant', 'the rotated-away refresh token');
// Userinfo refuses the revoked grant's access token with an RFC 6750 challenge the library parses.
await assert.rejects(client.fetchUserInfo(config, rotated.access_token, claims.sub), (err) => {
  assert.equal(err.code, 'OAUTH_WWW_AUTHENTICATE_CHALLENGE', `userinfo with a revoked access token: ${err}`);
  assert.equal(err.status, 401);
  assert.equal(err.cause[0].scheme, 'bearer');
  assert.equal(err.cause[0].parameters.error, 'invalid_token');
  return true;
});

step('RP-initiated logout');
const end = client.buildEndSessionUrl(config, {
  id_token_hint: rotated.id_token, post_logout_redirect_uri: postLogoutUri, state: 'bye-' + client.randomState(),
});
const out = await browse(end, postLogoutUri);
const outURL = new URL(out.url);
assert.equal(outURL.origin + outURL.pathname, postLogoutUri);
assert.equal(outURL.searchParams.get('state'), end.searchParams.get('state'));

step('signed out: prompt=none needs a sign-in');
const after = await signIn({ prompt: 'none' });
await rejects(client.authorizationCodeGrant(config, after.callback, {
  pkceCodeVerifier: after.verifier, expectedState: after.state, expectedNonce: after.nonce,
}), 'login_required', 'prompt=none after logout');

say({ done: true });
process.exit(0);
