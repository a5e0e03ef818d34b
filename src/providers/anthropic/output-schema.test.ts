import { describe, expect, it } from 'vitest';
import { anthropicOutputSchema } from './output-schema.js';
import { toAnthropicRequest } from './wire.js';

describe('anthropicOutputSchema', () => {
  it('keeps what Anthropic enforces and notes the rest in the description', () => {
    // What zod (via the OpenAI Agents SDK) makes of z.object({ n: z.number().int().min(1), … }).
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        n: { type: 'integer', minimum: 1, maximum: 9007199254740991 },
        name: { type: 'string', minLength: 2, description: 'a name' },
        when: { type: 'string', format: 'date-time' },
        colour: { type: 'string', format: 'color' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
        kind: { type: 'string', enum: ['a', 'b'] },
        maybe: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        either: { oneOf: [{ $ref: '#/$defs/point' }, { type: 'number', multipleOf: 2 }] },
      },
      required: ['n', 'name', 'when', 'colour', 'tags', 'kind', 'maybe', 'either'],
      additionalProperties: false,
      $defs: { point: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] } },
    };
    const before = structuredClone(schema);
    expect(anthropicOutputSchema(schema)).toEqual({
      $defs: {
        point: {
          type: 'object',
          properties: { x: { type: 'number' } },
          additionalProperties: false,
          required: ['x'],
        },
      },
      type: 'object',
      properties: {
        n: { type: 'integer', description: '{minimum: 1, maximum: 9007199254740991}' },
        name: { type: 'string', description: 'a name\n\n{minLength: 2}' },
        when: { type: 'string', format: 'date-time' },
        colour: { type: 'string', description: '{format: "color"}' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, description: '{maxItems: 3}' },
        kind: { enum: ['a', 'b'] },
        maybe: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        either: { anyOf: [{ $ref: '#/$defs/point' }, { type: 'number', description: '{multipleOf: 2}' }] },
      },
      additionalProperties: false,
      required: ['n', 'name', 'when', 'colour', 'tags', 'kind', 'maybe', 'either'],
    });
    expect(schema).toEqual(before);
  });

  it('closes every object (Anthropic takes additionalProperties: false only)', () => {
    expect(anthropicOutputSchema({ type: 'object', additionalProperties: { type: 'string' } })).toEqual({
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
  });

  it('is what the json_schema response_format becomes in output_config.format', () => {
    const body = toAnthropicRequest(
      {
        model: 'claude-x',
        messages: [{ role: 'user', content: 'hi' }],
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'out',
            strict: true,
            schema: { $schema: 'x', type: 'object', properties: { n: { type: 'integer', minimum: 0 } } },
          },
        },
      },
      false,
    );
    expect(body.output_config).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          properties: { n: { type: 'integer', description: '{minimum: 0}' } },
          additionalProperties: false,
        },
      },
    });
  });
});
