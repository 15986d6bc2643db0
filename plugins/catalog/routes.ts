/** HTTP routes of the catalog (SPEC "Catalog" and "Documentation, wiki, git"). */
import { clientGone, type JsonSchema, type PluginContext } from '../../sdk/index.js';
import { listExposures, listSources, overview, type CatalogDeps } from './catalog.js';
import { renderMarkdown, structuredDocs } from './docs.js';
import { gitStatus } from './git.js';
import { searchWiki, wikiPage, wikiPages } from './wiki.js';

const anyObject: JsonSchema = { type: 'object', additionalProperties: true };

export function registerRoutes(ctx: PluginContext, deps: CatalogDeps): void {
  ctx.route({
    method: 'GET',
    url: '/api/sources',
    permission: 'read',
    summary: "Sources declared under project.yml's sources:, each table with whether the warehouse holds it and its row count",
    tags: ['catalog'],
    schema: { response: { 200: { type: 'array', items: anyObject } } },
    handler: (req, reply) => listSources(deps, { caller: req.caller, signal: clientGone(reply) }),
  });

  ctx.route({
    method: 'GET',
    url: '/api/exposures',
    permission: 'read',
    summary: "Exposures declared under project.yml's exposures:, with the dependencies the project does not define",
    tags: ['catalog'],
    schema: { response: { 200: { type: 'array', items: anyObject } } },
    handler: () => listExposures(deps),
  });

  ctx.route({
    method: 'GET',
    url: '/api/overview',
    permission: 'read',
    summary: 'Schemas, tables with row counts, totals, recent transform runs and connectors',
    tags: ['catalog'],
    schema: { response: { 200: anyObject } },
    handler: (req, reply) => overview(deps, { caller: req.caller, signal: clientGone(reply) }),
  });

  ctx.route({
    method: 'GET',
    url: '/api/docs/structured',
    permission: 'read',
    summary: 'Documentation of the project as JSON: models with columns, types and lineage, seeds, sources, exposures, metrics, contracts',
    tags: ['catalog'],
    schema: { response: { 200: anyObject } },
    handler: (req, reply) => structuredDocs(deps, { caller: req.caller, signal: clientGone(reply) }),
  });

  ctx.route({
    method: 'GET',
    url: '/api/docs/markdown',
    permission: 'read',
    summary: 'Documentation of the project as one markdown document (text/markdown)',
    tags: ['catalog'],
    handler: async (req, reply) => {
      const markdown = renderMarkdown(await structuredDocs(deps, { caller: req.caller, signal: clientGone(reply) }), ctx.env);
      return reply.type('text/markdown; charset=utf-8').send(markdown);
    },
  });

  ctx.route<unknown, { q?: string }>({
    method: 'GET',
    url: '/api/wiki',
    permission: 'read',
    summary: "dp's user guide: pages with slugs, titles and categories; with q, the pages holding every word of q, with a snippet",
    tags: ['catalog'],
    schema: {
      querystring: { type: 'object', additionalProperties: false, properties: { q: { type: 'string', maxLength: 200 } } },
      response: {
        200: {
          type: 'array',
          items: { type: 'object', properties: { slug: { type: 'string' }, title: { type: 'string' }, category: { type: 'string' }, plugin: { type: ['string', 'null'] }, snippet: { type: 'string' } } },
        },
      },
    },
    handler: (req) => (req.query.q?.trim() ? searchWiki(req.query.q) : wikiPages().map(({ slug, title, category, plugin }) => ({ slug, title, category, plugin }))),
  });

  ctx.route<unknown, unknown, { slug: string }>({
    method: 'GET',
    url: '/api/wiki/:slug',
    permission: 'read',
    summary: 'One wiki page: title, category and markdown content',
    tags: ['catalog'],
    schema: {
      params: { type: 'object', required: ['slug'], properties: { slug: { type: 'string', minLength: 1, maxLength: 100 } } },
      response: { 200: { type: 'object', properties: { slug: { type: 'string' }, title: { type: 'string' }, category: { type: 'string' }, content: { type: 'string' } } } },
    },
    handler: (req) => {
      const { slug, title, category, content } = wikiPage(req.params.slug);
      return { slug, title, category, content };
    },
  });

  ctx.route({
    method: 'GET',
    url: '/api/git/status',
    permission: 'read',
    summary: 'Branch, dirty flag, changed files and last commit of the git repository holding the project; {is_repo: false} outside one',
    tags: ['catalog'],
    schema: { response: { 200: anyObject } },
    handler: () => gitStatus(ctx.project.root),
  });
}
