/** What a content filter did to a call, as the answer's `provider_safeguards` carry it on the wire. */
export type SafeguardStatus = 'redacted' | 'blocked' | 'flagged' | 'passed';

/** One filter's outcome (an item of `safeguard_results`). Never carries matched text. */
export interface SafeguardResult {
  type: 'content_filter';
  status: { type: SafeguardStatus };
  label: string;
  slug?: string;
  matches: number;
  /** Present on the results of filters applied to the model's answer. */
  stage?: 'response';
}
