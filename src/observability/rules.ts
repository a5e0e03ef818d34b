/**
 * Which records a destination receives: its API-key allow-list, its filter rules, its sampling.
 * Rules are checked when a destination is written (a bad rule is a 400 then, never a silent miss).
 */
import { RE2JS } from 're2js';
import type { GenerationsTable } from '../db/schema.js';
import { badRequest } from '../lib/errors.js';
import { FILTER_FIELDS, FILTER_OPERATORS } from './schemas.js';

export interface Rule {
  field: string;
  operator: string;
  value?: string | number;
}
export interface RuleGroup {
  logic?: 'and' | 'or';
  rules: Rule[];
}
export interface FilterRules {
  enabled: boolean;
  groups: RuleGroup[];
}

const NUMERIC = new Set(['gt', 'lt', 'gte', 'lte']);
const fields: readonly string[] = FILTER_FIELDS;
const operators: readonly string[] = FILTER_OPERATORS;

/** Throws a 400 naming the first rule that could never be evaluated. */
export function checkRules(rules: FilterRules | null | undefined): void {
  for (const [g, group] of (rules?.groups ?? []).entries())
    for (const [r, rule] of group.rules.entries()) {
      const at = `filter_rules.groups[${g}].rules[${r}]`;
      if (!fields.includes(rule.field))
        throw badRequest(
          `${at}.field must be one of ${FILTER_FIELDS.join(', ')}; ${rule.field} is not supported`,
        );
      if (!operators.includes(rule.operator))
        throw badRequest(`${at}.operator must be one of ${FILTER_OPERATORS.join(', ')}`);
      const needsValue = rule.operator !== 'exists' && rule.operator !== 'not_exists';
      if (needsValue && rule.value === undefined)
        throw badRequest(`${at}.value is required for ${rule.operator}`);
      if (NUMERIC.has(rule.operator) && !Number.isFinite(Number(rule.value)))
        throw badRequest(`${at}.value must be a number for ${rule.operator}`);
      if (rule.operator === 'regex') {
        try {
          RE2JS.compile(String(rule.value));
        } catch {
          throw badRequest(`${at}.value is not a valid regular expression`);
        }
      }
    }
}

function fieldOf(row: GenerationsTable, field: string): string | number | null {
  switch (field) {
    case 'model':
      return row.model ?? row.requested_model;
    case 'provider':
      return row.provider;
    case 'user_id':
      return row.user_id;
    case 'finish_reason':
      return row.finish_reason;
    case 'total_cost':
      return row.cost_usd;
    case 'total_tokens':
      return row.prompt_tokens + row.completion_tokens;
    case 'prompt_tokens':
      return row.prompt_tokens;
    case 'completion_tokens':
      return row.completion_tokens;
    default:
      return null;
  }
}

const patterns = new Map<string, RE2JS>();
function pattern(source: string): RE2JS {
  let p = patterns.get(source);
  if (!p) {
    if (patterns.size > 1000) patterns.clear();
    p = RE2JS.compile(source);
    patterns.set(source, p);
  }
  return p;
}

function ruleMatches(row: GenerationsTable, rule: Rule): boolean {
  const v = fieldOf(row, rule.field);
  if (rule.operator === 'exists') return v !== null && v !== '';
  if (rule.operator === 'not_exists') return v === null || v === '';
  if (v === null) return rule.operator === 'not_equals' || rule.operator === 'not_contains';
  const want = rule.value as string | number;
  if (NUMERIC.has(rule.operator)) {
    const n = Number(v);
    const w = Number(want);
    return rule.operator === 'gt'
      ? n > w
      : rule.operator === 'lt'
        ? n < w
        : rule.operator === 'gte'
          ? n >= w
          : n <= w;
  }
  const s = String(v);
  const w = String(want);
  switch (rule.operator) {
    case 'equals':
      return s === w;
    case 'not_equals':
      return s !== w;
    case 'contains':
      return s.includes(w);
    case 'not_contains':
      return !s.includes(w);
    case 'starts_with':
      return s.startsWith(w);
    case 'ends_with':
      return s.endsWith(w);
    case 'regex':
      return pattern(w).matcher(s).find();
    default:
      return false;
  }
}

/** Whether `row` passes the rules: every group matches (a group's rules by its logic, default and). */
export function passesRules(row: GenerationsTable, rules: FilterRules | null): boolean {
  if (!rules?.enabled) return true;
  return rules.groups.every((g) =>
    g.logic === 'or' ? g.rules.some((r) => ruleMatches(row, r)) : g.rules.every((r) => ruleMatches(row, r)),
  );
}
