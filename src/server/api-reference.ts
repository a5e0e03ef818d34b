/**
 * The Scalar API reference pages (/docs on the gateway and on the media service), configured to
 * load nothing from other hosts: the script is served by the plugin itself, the system fonts
 * replace Scalar's web fonts, and the features that call Scalar's services (telemetry, the hosted
 * API client, the agent and MCP buttons) are off.
 */

import type { FastifyApiReferenceOptions } from '@scalar/fastify-api-reference';

export function apiReferenceOptions(openapiUrl: string, title: string): FastifyApiReferenceOptions {
  return {
    routePrefix: '/docs',
    configuration: {
      url: openapiUrl,
      pageTitle: title,
      withDefaultFonts: false,
      telemetry: false,
      hideClientButton: true,
      // Shown on localhost by default: links to Scalar's hosted tools.
      showDeveloperTools: 'never',
      mcp: { disabled: true },
      // The agent is on by default when the page is opened on localhost; it talks to Scalar's servers.
      agent: { disabled: true },
    } as FastifyApiReferenceOptions['configuration'],
  };
}
