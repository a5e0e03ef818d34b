import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the gateway at /console/ under a strict CSP (src/console/serve.ts): no inline scripts
// or styles and nothing from another origin, so nothing here may add them.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    // The polyfill would be inlined into index.html; every browser the console supports has modulepreload.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
