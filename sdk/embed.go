// Package sdk ships the built browser SDK (dist/, built by `npm run build` and committed, so that Go builds
// need no npm) and the demo page (demo/) to the Go binary; services/demo serves them on the dev server.
package sdk

import "embed"

// Files holds dist/service-auth-client.min.js (the script-tag build), dist/service-auth-client.js (the ES
// module) and the demo page's files under demo/.
//
//go:embed dist/service-auth-client.min.js dist/service-auth-client.js demo/index.html demo/app.js demo/app.css
var Files embed.FS
