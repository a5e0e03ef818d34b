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
import { KeysPage } from './keys';
import { ModelsPage } from './models';
import { OrganizationsPage } from './organizations';
import { OverviewPage } from './overview';

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
  { path: '/organizations', title: 'Organizations', component: OrganizationsPage, access: 'operator' },
];

/** The pages a session of this role may open. */
export function pagesFor(role: Role): PageDef[] {
  return pages.filter((p) => p.access === 'any' || p.access === role);
}
