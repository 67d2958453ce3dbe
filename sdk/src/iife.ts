// The script-tag build: defines the global ServiceAuthClient (with ServiceAuthClient.AuthError).
import { ServiceAuthClient } from './client.js'

;(globalThis as { ServiceAuthClient?: typeof ServiceAuthClient }).ServiceAuthClient = ServiceAuthClient
