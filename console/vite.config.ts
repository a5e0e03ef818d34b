import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the gateway at /console/ under a strict CSP (src/console/serve.ts): no inline scripts
// or styles and nothing from another origin, so nothing here may add them.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  // `npx vite console`: live reload, the API proxied to a running gateway (GATEHOUSE_URL).
  server: { proxy: { '/api': process.env.GATEHOUSE_URL ?? 'http://127.0.0.1:8080' } },
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    // The polyfill would be inlined into index.html; every browser the console supports has modulepreload.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
