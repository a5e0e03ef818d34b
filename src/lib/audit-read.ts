import type { FastifyRequest } from 'fastify';

/**
 * The socket address of the audit log's own reads of a resource before a write (app.inject, see
 * audit/hook.ts). No real socket has it (it is no IP address), so no client can claim it; metrics
 * and the access log leave those reads out, as nobody made them.
 */
export const AUDIT_READ_ADDRESS = 'gatehouse-audit-read';

export const isAuditRead = (req: FastifyRequest): boolean =>
  req.raw.socket?.remoteAddress === AUDIT_READ_ADDRESS;
