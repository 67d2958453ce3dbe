import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

// http://localhost:5173 is the origin and redirect URI that formsservice.yaml registers for this app.
export default defineConfig({
  plugins: [react()],
  server: { host: 'localhost', port: 5173, strictPort: true },
  preview: { host: 'localhost', port: 5173, strictPort: true },
})
