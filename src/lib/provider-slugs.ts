/**
 * Provider slugs accepted for BYOK credentials and guardrail provider lists (the official client's
 * BYOKProviderSlug enum). Shared by byok/ and guardrails/.
 */
export const PROVIDER_SLUGS: readonly string[] = `ai21 aion-labs akashml alibaba amazon-bedrock
amazon-bedrock/claude-on-aws amazon-nova ambient anthropic anthropic/2 arcee-ai assemblyai atlas-cloud
avian azure baidu baseten black-forest-labs byteplus cerebras chutes cirrascale clarifai claude-on-aws
cloudflare cohere coreweave cosine crusoe darkbloom databricks decart deepgram deepinfra deepseek dekallm
digitalocean featherless fireworks fish-audio friendli gmicloud google-ai-studio google-vertex groq heygen
inception inceptron inferact-vllm inference-net infermatic inflection io-net ionstream krea liquid makora
mancer mara meta minimax mistral modal modelrun modular moonshotai morph near-ai nebius nex-agi nextbit
novita nvidia ollama open-inference openai parasail perceptron perplexity phala poolside primeintellect
quiver recraft reka relace runway sail-research sakana sakana-ai sambanova seed siliconflow sourceful
stepfun streamlake switchpoint tencent tenstorrent thinkingmachines together typesafe unbiased upstage
venice voyageai wafer wandb wandb-legacy xai xiaomi z-ai`
  .split(/\s+/)
  .filter(Boolean);

const known = new Set(PROVIDER_SLUGS);

/**
 * Slugs Gatehouse itself adds: `gatehouse` (the built-in development provider),
 * `openai-compatible` (any configured OpenAI-compatible server), and the default slugs of the
 * vendor presets the list above lacks (`OPENROUTER_API_KEY` → `openrouter`, `VLLM_BASE_URL` → `vllm` …).
 */
export const LOCAL_PROVIDER_SLUGS: readonly string[] = [
  'gatehouse',
  'openai-compatible',
  'openrouter',
  'vllm',
  'lmstudio',
];
for (const s of LOCAL_PROVIDER_SLUGS) known.add(s);

export const isProviderSlug = (slug: string): boolean => known.has(slug);

/** The entries of `slugs` that are not known provider slugs. */
export const unknownProviderSlugs = (slugs: readonly string[]): string[] =>
  slugs.filter((s) => !known.has(s));
