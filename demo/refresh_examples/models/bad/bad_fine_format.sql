{#- Wrong on purpose (the tests select it): a datetime_format reading nanoseconds, finer than a timestamp keeps. -#}
{{ config(materialized='refresh',
          meta={'refresh': {'type': 'timestamp', 'timestamp_column': 'updated_at', 'datetime_format': 'yyyy-MM-dd HH:mm:ss.SSSSSSSSS'}}) }}
select id, cast(updated_at as string) as updated_at from {{ source('batches', 'src_bad_params') }}
