import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const sdkRoot = join(dirname(fileURLToPath(import.meta.url)), '../..')
export const repoRoot = join(sdkRoot, '..')
export const artifacts = join(repoRoot, 'artifacts')
/** Debian's chromium package; hack/install-chromium.sh installs it. */
export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium'
