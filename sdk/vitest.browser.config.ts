import { defineConfig } from 'vitest/config'

// Browser tests: the built SDK and the demo page in real headless Chromium, against `formsservice dev`
// (real auth and forms services) on a real redis-server, both started by test/browser/global-setup.ts.
export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    globalSetup: ['test/browser/global-setup.ts'],
    environment: 'node',
    fileParallelism: false, // one Chromium at a time on a small machine
    testTimeout: 60_000,
    hookTimeout: 180_000, // the global setup builds the Go binary
  },
})
