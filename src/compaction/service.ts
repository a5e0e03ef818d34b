import type { CompactionDraft } from '../formats/compaction.js';
import { compactionAnswer } from '../formats/compaction.js';
import {
  GATEHOUSE_COMPACTION_PREFIX,
  isGatehouseCompaction,
  summaryMessage,
} from '../formats/compaction-item.js';
import { isObj, type Obj } from '../formats/validate.js';
import { decrypt, encrypt } from '../lib/crypto.js';
import { badRequest } from '../lib/errors.js';

/** Binds a sealed summary to the organization that compacted: another tenant cannot open it. */
const aad = (organizationId: string) => `compaction:${organizationId}`;

/**
 * Compaction items Gatehouse mints (`POST /responses/compact` served by a provider without OpenAI's
 * compact endpoint): the summary sealed under the master key (AES-256-GCM, as BYOK credentials are)
 * so that it is opaque to the caller as OpenAI's own is, and opened again when a later `/responses`
 * call sends the item back.
 */
export class CompactionService {
  constructor(private readonly masterKey: Buffer) {}

  /** A translated compaction answer: the draft's summary sealed into its compaction item. */
  answer(draft: CompactionDraft, organizationId: string): Obj {
    const sealed = GATEHOUSE_COMPACTION_PREFIX + encrypt(this.masterKey, draft.summary, aad(organizationId));
    return compactionAnswer(draft, sealed);
  }

  /**
   * `body` with each Gatehouse compaction item of its `input` replaced by the message carrying its
   * summary (the same on an OpenAI lane, which cannot read it, and on a translated call); OpenAI's
   * own items stay as they are. 400 naming the item when one does not open (altered, or another
   * organization's). The body is returned as it is when it holds none.
   */
  expand<B>(body: B, organizationId: string): B {
    if (!isObj(body) || !Array.isArray(body.input)) return body;
    const input = body.input as unknown[];
    if (!input.some((item) => isObj(item) && isGatehouseCompaction(item.encrypted_content))) return body;
    const opened = input.map((item, i) => {
      if (!isObj(item) || item.type !== 'compaction' || !isGatehouseCompaction(item.encrypted_content))
        return item;
      return summaryMessage(this.open(item.encrypted_content, organizationId, `input[${i}]`));
    });
    return { ...body, input: opened };
  }

  private open(sealed: string, organizationId: string, path: string): string {
    try {
      return decrypt(this.masterKey, sealed.slice(GATEHOUSE_COMPACTION_PREFIX.length), aad(organizationId));
    } catch {
      throw badRequest(
        `${path}.encrypted_content: this compaction item cannot be opened (it was altered, or compacted for another organization)`,
      );
    }
  }
}
