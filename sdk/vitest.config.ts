import { defineConfig } from 'vitest/config'

// Unit tests: the SDK in Node against an in-process provider (test/helpers). No server, no browser.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/package/**/*.test.ts'],
    environment: 'node',
    testTimeout: 10_000,
  },
})
