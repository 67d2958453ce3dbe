// The script-tag build: defines the global ServiceAuthClient (with ServiceAuthClient.AuthError).
import { ServiceAuthClient } from './client'

;(globalThis as { ServiceAuthClient?: typeof ServiceAuthClient }).ServiceAuthClient = ServiceAuthClient
