/**
 * AWS Bedrock Runtime (`https://bedrock-runtime.{region}.amazonaws.com`, every request SigV4-signed
 * for service `bedrock`, see signer.ts).
 *
 * - Every model, translated: Converse (`POST /model/{modelId}/converse`) and ConverseStream
 *   (`/converse-stream`, an AWS event stream), mapped in converse.ts.
 * - Anthropic models, natively: a `/messages` caller's body goes through InvokeModel
 *   (`/invoke`, `/invoke-with-response-stream`) as Anthropic's Messages body for Bedrock (invoke.ts),
 *   so nothing is lost in translation.
 * - Embeddings through InvokeModel with Cohere Embed's or Amazon Titan's body (embeddings.ts).
 *
 * A model's Bedrock id is its entry in the provider's `model_ids`, else its upstream id as is:
 * foundation model ids (`anthropic.claude-…-v1:0`), cross-region inference profiles
 * (`us.`/`eu.`/`apac.`/`global.` prefixed) and ARNs alike.
 */
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
} from '../../formats/chat.js';
import { encodeSse } from '../../formats/sse.js';
import { refuseThread } from '../../formats/threads.js';
import type { CallSignal } from '../../lib/call-abort.js';
import { extended } from '../../lib/objects.js';
import { messagesStreamTap, tapMessage } from '../anthropic/lane.js';
import { obj } from '../errors.js';
import {
  joinUrl,
  postJson,
  postJsonWhole,
  readJson,
  type StreamBody,
  type TextBody,
  toUpstreamError,
  type UpstreamResponse,
  upstreamErrorFrom,
} from '../http.js';
import { redact } from '../redact.js';
import { inlineRemoteMedia } from '../remote-media.js';
import {
  type CallContext,
  type ForwardedJson,
  type ForwardRequest,
  type Provider,
  type ProviderConfig,
  type ProviderTraits,
  type RelayFrame,
  UpstreamError,
} from '../types.js';
import { ConverseStreamMapper, fromConverseResponse, toConverseRequest } from './converse.js';
import {
  cohereBody,
  cohereVectors,
  embeddingsResponse,
  embeddingTexts,
  isCohereEmbed,
  titanBody,
  titanVector,
} from './embeddings.js';
import { bedrockErrors, streamException, withErrorType } from './errors.js';
import { EVENT_STREAM_TYPE, eventStreamMessages, type StreamMessage } from './eventstream.js';
import { droppedInvokeBetas, invokeBody, isAnthropicModel, streamedEvent } from './invoke.js';
import { BedrockSigner } from './signer.js';

/**
 * Every model through Converse, which carries what Anthropic's Messages API carries (no logprobs,
 * n, seed) — but Anthropic's betas only for Claude: another model's call drops them.
 */
const CONVERSE: ProviderTraits = {
  natives: new Set(),
  target: 'anthropic',
  // Calls are signed with AWS credentials, never with a Gatehouse-configured key.
  keyOptional: true,
  drops: ['anthropic-beta', 'tools.eager_input_streaming', 'web_search'],
  // Converse has no web search tool (Anthropic's server tool is not offered on Bedrock): a search
  // asked for is refused, one merely offered as a tool is dropped (capabilities.ts).
  refuses: ['web_search'],
};
/**
 * Anthropic models also take `/messages` bodies as they are, through InvokeModel (a lane), and
 * betas on Converse (`additionalModelRequestFields.anthropic_beta`).
 */
const ANTHROPIC: ProviderTraits = {
  ...CONVERSE,
  natives: new Set(['anthropic-messages']),
  // Converse has no field for a tool's eager input streaming.
  drops: ['tools.eager_input_streaming', 'web_search'],
  laneDropped: (body, headers) => droppedInvokeBetas(body, headers).map((b) => `anthropic-beta:${b}`),
};

type Operation = 'converse' | 'converse-stream' | 'invoke' | 'invoke-with-response-stream';

const header = (h: UpstreamResponse['headers'], name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

export class BedrockProvider implements Provider {
  readonly traits: ProviderTraits = { ...CONVERSE, forModel: (model) => this.traitsFor(model) };
  private readonly signer: BedrockSigner;

  /**
   * The entry's `headers` (e.g. `X-Amzn-Bedrock-GuardrailIdentifier`), signed with the rest; never
   * the ones the signature itself sets.
   */
  private readonly extraHeaders: Record<string, string> = {};

  constructor(readonly config: ProviderConfig) {
    if (!config.bedrock) throw new Error(`provider ${config.slug}: kind bedrock needs its bedrock settings`);
    this.signer = new BedrockSigner(config.bedrock);
    for (const [k, v] of Object.entries(config.headers ?? {}))
      if (!/^(authorization|host|x-amz-(date|security-token|content-sha256))$/i.test(k))
        this.extraHeaders[k.toLowerCase()] = v;
  }

  /** `/messages` bodies go through InvokeModel only for Anthropic models; others are translated. */
  private traitsFor(upstreamModel: string): ProviderTraits {
    try {
      return isAnthropicModel(this.modelId(upstreamModel)) ? ANTHROPIC : CONVERSE;
    } catch {
      return CONVERSE; // an id Bedrock could not have: translated, and refused when called
    }
  }

  /**
   * The Bedrock model id of `model`. A caller may name any `<slug>/<id>`: only the characters of
   * model ids, inference profile ids and ARNs are taken (the id is a URL path segment).
   */
  modelId(model: string): string {
    const id = this.config.bedrock?.modelIds[model] ?? model;
    if (!/^[\w.:/-]{1,256}$/.test(id) || /(^|\/)\.+(\/|$)/.test(id))
      throw new UpstreamError(400, `not a valid Bedrock model id: ${JSON.stringify(id.slice(0, 80))}`, {
        retryable: false,
      });
    return id;
  }

  private url(model: string, op: Operation): string {
    return joinUrl(this.config.baseUrl, `/model/${encodeURIComponent(this.modelId(model))}/${op}`);
  }

  private secrets(): string[] {
    return this.signer.secrets();
  }

  /** Signs and sends `body`; an error status → UpstreamError with Bedrock's error type. */
  private send(url: string, body: unknown, ctx: CallContext, stream: true): Promise<UpstreamResponse>;
  private send(
    url: string,
    body: unknown,
    ctx: CallContext,
    stream: false,
  ): Promise<UpstreamResponse<TextBody>>;
  private async send(
    url: string,
    body: unknown,
    ctx: CallContext,
    stream: boolean,
  ): Promise<UpstreamResponse<TextBody>> {
    const accept = stream ? EVENT_STREAM_TYPE : 'application/json';
    const headers = await this.signer.sign(
      {
        url,
        body: JSON.stringify(body),
        headers: extended(this.extraHeaders, { 'content-type': 'application/json', accept }),
      },
      ctx.signal,
    );
    const opts = { secrets: this.secrets() };
    const res = stream
      ? await postJson(url, body, headers, ctx.signal, {
          ...opts,
          ...(ctx.idleTimeoutMs ? { bodyTimeoutMs: ctx.idleTimeoutMs } : {}),
        })
      : await postJsonWhole(url, body, headers, ctx.signal, opts);
    if (res.status >= 400) {
      let text = '';
      try {
        text = await res.body.text();
      } catch (err) {
        throw toUpstreamError(err, ctx.signal, this.secrets());
      }
      const err = upstreamErrorFrom(res.status, res.headers, text, bedrockErrors, this.secrets());
      throw withErrorType(err, header(res.headers, 'x-amzn-errortype'));
    }
    if (stream) {
      const type = (header(res.headers, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase();
      if (type !== EVENT_STREAM_TYPE) {
        const text = await res.body.text().catch(() => '');
        throw new UpstreamError(
          502,
          redact(
            `upstream answered a stream request with ${type || 'no content type'}: ${text.slice(0, 200)}`,
            [...this.secrets()],
          ),
          { retryable: true },
        );
      }
    }
    return res;
  }

  /** The messages of a streamed answer; transport failures → UpstreamError, exceptions thrown. */
  private async *messages(res: UpstreamResponse, signal: CallSignal): AsyncGenerator<StreamMessage> {
    const body = res.body as StreamBody;
    const secrets = this.secrets();
    try {
      for await (const m of eventStreamMessages(body)) {
        if (m.messageType !== 'event') throw streamException(m.type, m.body, secrets);
        yield m;
      }
    } catch (err) {
      throw toUpstreamError(err, signal, secrets);
    } finally {
      if (!body.readableEnded) body.destroy();
    }
  }

  /**
   * The Converse body, images and documents given by URL fetched and sent inline (Converse takes
   * bytes only). What Converse cannot carry throws a TranslationError: the fallback loop lets
   * another provider of the model try, else answers the caller's 400.
   */
  private async converse(req: ChatRequest, ctx: CallContext): Promise<Record<string, unknown>> {
    const inlined = await inlineRemoteMedia(req, ctx.media, ctx.signal);
    return toConverseRequest(inlined, {
      anthropic: isAnthropicModel(this.modelId(req.model)),
      maxOutput: ctx.maxOutputTokens,
    });
  }

  /** One InvokeModel call's JSON answer and its input token count header. */
  private async invokeJson(
    model: string,
    body: unknown,
    ctx: CallContext,
  ): Promise<{ json: unknown; tokens: number }> {
    const res = await this.send(this.url(model, 'invoke'), body, ctx, false);
    const json = await readJson(res, ctx.signal, this.secrets());
    return { json, tokens: Number(header(res.headers, 'x-amzn-bedrock-input-token-count')) || 0 };
  }

  async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    const texts = embeddingTexts(req);
    if (isCohereEmbed(this.modelId(req.model))) {
      const { json, tokens } = await this.invokeJson(req.model, cohereBody(texts), ctx);
      const estimate = texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0);
      return embeddingsResponse(req, cohereVectors(json, texts.length), tokens || estimate);
    }
    // Titan embeds one text per call: sent one after the other (a caller's batch is one unit of
    // work for the rate limits Bedrock applies per account).
    const vectors: number[][] = [];
    let tokens = 0;
    for (const text of texts) {
      const { json, tokens: counted } = await this.invokeJson(req.model, titanBody(text, req), ctx);
      const one = titanVector(json);
      vectors.push(one.vector);
      tokens += one.tokens || counted;
    }
    return embeddingsResponse(req, vectors, tokens);
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    const res = await this.send(this.url(req.model, 'converse'), await this.converse(req, ctx), ctx, false);
    const raw = await readJson(res, ctx.signal, this.secrets());
    return fromConverseResponse(raw, req.model, header(res.headers, 'x-amzn-requestid'), {
      excludeReasoning: req.reasoning?.exclude === true,
    });
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const res = await this.send(
      this.url(req.model, 'converse-stream'),
      await this.converse(req, ctx),
      ctx,
      true,
    );
    const mapper = new ConverseStreamMapper(req.model, header(res.headers, 'x-amzn-requestid'), {
      excludeReasoning: req.reasoning?.exclude === true,
    });
    const messages = this.messages(res, ctx.signal);
    return (async function* () {
      for await (const m of messages) {
        yield* mapper.push(m.type, obj(m.body));
        if (mapper.done) return;
      }
      mapper.finish();
    })();
  }

  async forward(req: ForwardRequest, ctx: CallContext): Promise<ForwardedJson> {
    refuseThread(req.body, 'Amazon Bedrock');
    const model = String(req.body.model ?? '');
    const res = await this.send(this.url(model, 'invoke'), invokeBody(req.body, req.headers), ctx, false);
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw toUpstreamError(err, ctx.signal, this.secrets());
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new UpstreamError(
        502,
        `upstream sent invalid JSON: ${redact(text.slice(0, 200), this.secrets())}`,
        {
          retryable: true,
        },
      );
    }
    return { status: res.status, text, json, ...tapMessage(json, this.secrets()) };
  }

  /**
   * InvokeModelWithResponseStream: each `chunk` event carries one Anthropic stream event (base64
   * JSON in `bytes`), relayed to the caller as the SSE frame Anthropic's own API would send.
   */
  async forwardStream(req: ForwardRequest, ctx: CallContext): Promise<AsyncIterable<RelayFrame>> {
    refuseThread(req.body, 'Amazon Bedrock');
    const model = String(req.body.model ?? '');
    const url = this.url(model, 'invoke-with-response-stream');
    const res = await this.send(url, invokeBody(req.body, req.headers), ctx, true);
    const secrets = this.secrets();
    const tap = messagesStreamTap(secrets);
    const messages = this.messages(res, ctx.signal);
    return (async function* () {
      let done = false;
      for await (const m of messages) {
        const ev = streamedEvent(m);
        if (!ev) continue;
        const read = tap(ev);
        const frame = encodeSse(ev);
        if (read) {
          const { done: last, ...seen } = read;
          yield { frame, ...seen };
          if (last) done = true;
        } else yield { frame };
      }
      if (!done)
        throw new UpstreamError(502, 'upstream stream ended before its last event', { retryable: true });
    })();
  }
}
