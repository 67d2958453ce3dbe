// Where the app finds formsservice, and who it is there. Vite reads VITE_* variables from the
// environment or a .env file at build time; the defaults fit `make run` with formsservice.yaml.
export const formsserviceUrl = import.meta.env.VITE_FORMSSERVICE_URL ?? 'http://localhost:8080'
export const clientId = import.meta.env.VITE_CLIENT_ID ?? 'react-vite-example'
