/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** The issuer, and the address of the forms service (the dev server serves both). */
  readonly VITE_FORMSSERVICE_URL?: string
  /** The OAuth client registered for this app. */
  readonly VITE_CLIENT_ID?: string
}
