
// ---- futures channels as card paths (the agent drains them into the connection).

impl<T: 'static> AcpItem for (AcpNotification, futures::channel::oneshot::Sender<T>) {
    fn acp_item(update: AcpNotification) -> (Self, AcpReceipt) {
        let (tx, rx) = futures::channel::oneshot::channel();
        (
            (update, tx),
            Some(Box::pin(async move {
                let _ = rx.await;
            })),
        )
    }
}

impl<I: AcpItem> AcpSink for futures::channel::mpsc::UnboundedSender<I> {
    fn acp_sender(&self) -> Option<AcpSend> {
        let tx = self.clone();
        Some(AcpSend {
            send: std::rc::Rc::new(move |update| {
                let (item, receipt) = I::acp_item(update);
                tx.unbounded_send(item).ok().and(receipt)
            }),
            loops: true,
        })
    }
}
