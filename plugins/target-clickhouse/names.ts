/** The suffix of a model's local table on each shard, behind its Distributed table of the same name (cluster targets). */
export const LOCAL = '__dp_local';
