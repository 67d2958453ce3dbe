import { defineConfig } from 'vitest/config'

// The example in real headless Chromium against `formsservice dev`; test/global-setup.ts starts it all.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    environment: 'node',
    fileParallelism: false, // one Chromium at a time on a small machine
    testTimeout: 60_000,
    hookTimeout: 300_000, // the global setup builds the Go binary and the app
  },
})
