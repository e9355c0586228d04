/** Renders a VNode or text built in a script (table cell helpers reused in templates). */
import { defineComponent, type PropType, type VNodeChild } from "vue";

export default defineComponent({
  name: "RenderNode",
  props: {
    node: { type: [Object, String, Number, Array] as PropType<VNodeChild>, required: true },
  },
  setup: (props) => () => props.node,
});
