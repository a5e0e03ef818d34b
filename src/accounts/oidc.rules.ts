import type { RoleRule } from './oidc.settings.js';

/** What the provider says about the person signing in (ID token claims merged with userinfo). */
export type Claims = Record<string, unknown>;

/** Whether `rule` names this identity (email compared in lower case). */
export function ruleMatches(rule: RoleRule, email: string, claims: Claims): boolean {
  if (rule.email !== undefined) return rule.email === email;
  if (rule.email_domain !== undefined) return email.endsWith(`@${rule.email_domain}`);
  if (rule.claim !== undefined) {
    const v = claims[rule.claim];
    return Array.isArray(v) ? v.includes(rule.value) : v === rule.value;
  }
  return false;
}
