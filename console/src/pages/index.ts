/**
 * The console's pages. A new page is one file in this folder and one line here: the shell builds
 * the navigation and the routes from this list, in this order.
 *
 * `access` says who sees the page:
 * - `management`: signed in with a management key (the organization's management API);
 * - `operator`: signed in with the operator token (the /admin API; operator-only pages);
 * - `any`: both (public or key-agnostic routes).
 */
import type { ComponentType } from 'react';
import type { Role } from '../session';
import { ActivityPage } from './activity';
import { AuditLogPage } from './audit-log';
import { BatchesPage } from './batches';
import { ByokPage } from './byok';
import { CreditGrantsPage } from './credit-grants';
import { CreditsPage } from './credits';
import { FilesPage } from './files';
import { GuardrailsPage } from './guardrails';
import { InternsPage } from './interns';
import { KeysPage } from './keys';
import { ModelsPage } from './models';
import { OrganizationsPage } from './organizations';
import { OverviewPage } from './overview';
import { PlaygroundPage } from './playground';
import { PresetsPage } from './presets';
import { ProviderHealthPage } from './provider-health';
import { UsersPage } from './users';
import { VaultPage } from './vault';
import { WorkspacesPage } from './workspaces';

export interface PageDef {
  /** Under /console, e.g. '/keys'. */
  path: string;
  /** The navigation link's text, the page's <h1> and the document title. */
  title: string;
  component: ComponentType;
  access: Role | 'any';
}

export const pages: PageDef[] = [
  { path: '/keys', title: 'Keys', component: KeysPage, access: 'management' },
  { path: '/models', title: 'Models', component: ModelsPage, access: 'any' },
  { path: '/overview', title: 'Overview', component: OverviewPage, access: 'management' },
  { path: '/activity', title: 'Activity', component: ActivityPage, access: 'management' },
  { path: '/guardrails', title: 'Guardrails', component: GuardrailsPage, access: 'management' },
  { path: '/byok', title: 'Provider keys', component: ByokPage, access: 'management' },
  { path: '/workspaces', title: 'Workspaces', component: WorkspacesPage, access: 'management' },
  { path: '/playground', title: 'Playground', component: PlaygroundPage, access: 'management' },
  { path: '/batches', title: 'Batches', component: BatchesPage, access: 'management' },
  { path: '/files', title: 'Files', component: FilesPage, access: 'management' },
  { path: '/presets', title: 'Presets', component: PresetsPage, access: 'management' },
  { path: '/vault', title: 'Vault', component: VaultPage, access: 'management' },
  { path: '/organizations', title: 'Organizations', component: OrganizationsPage, access: 'operator' },
  { path: '/interns', title: 'Interns', component: InternsPage, access: 'management' },
  { path: '/credits', title: 'Credits', component: CreditsPage, access: 'management' },
  { path: '/users', title: 'Users', component: UsersPage, access: 'operator' },
  { path: '/credit-grants', title: 'Credit grants', component: CreditGrantsPage, access: 'operator' },
  { path: '/provider-health', title: 'Provider health', component: ProviderHealthPage, access: 'operator' },
  { path: '/audit-log', title: 'Audit log', component: AuditLogPage, access: 'any' },
];

/** The pages a session of this role may open. */
export function pagesFor(role: Role): PageDef[] {
  return pages.filter((p) => p.access === 'any' || p.access === role);
}
