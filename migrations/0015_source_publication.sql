-- A publication the user made at the source and names in the definition (least privilege: the
-- source role then needs neither CREATE on the database nor ownership of the tables). NULL: the
-- pipeline creates and owns its own, named from its id.
ALTER TABLE pipelines ADD COLUMN source_publication text;
