-- Egress allow-lists: the hosts an agent's runs may reach through the runner's egress proxy (JSON list
-- of patterns such as "github.com", "*.npmjs.org", "host:8443"), its "no network" switch (only its
-- model endpoint), and the workspace's default list every agent gets. Twin: ../sqlite/0014_egress.sql.
alter table agent add column egress_hosts jsonb not null default '[]';
alter table agent add column no_network boolean not null default false;
alter table workspace add column egress_hosts jsonb not null default '[]';
