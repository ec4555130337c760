// Positions are core vocabulary; the PostgreSQL source speaks them under their PostgreSQL name.
export * from '../../core/lsn.js';
