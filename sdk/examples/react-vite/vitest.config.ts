import { defineConfig } from 'vitest/config'

// The example in real headless Chromium against `formsservice dev`; test/global-setup.ts starts it all.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    environment: 'node',
    fileParallelism: false, // one Chromium at a time on a small machine
    testTimeout: 120_000, // the Vite dev server compiles the app on the first visit
    expect: { poll: { timeout: 10_000 } }, // a page under a loaded machine
    hookTimeout: 300_000, // the global setup builds the Go binary and the app
  },
})
